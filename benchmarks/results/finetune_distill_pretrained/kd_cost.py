"""Cost of the distillation term on [16, 40, 6625] logits (16 lines x 40 CTC frames x PP-OCRv4 classes), CPU seconds
per call (process_time, 3 reps after 1 warm-up): distill_pretrained.ctc_distill_loss forward + backward, paddle's
F.log_softmax forward (+ backward), and the log-softmax written as x - max - log(sum(exp(x - max))).
    OMP_NUM_THREADS=1 PYTHONPATH=$PWD python3 benchmarks/results/finetune_distill_pretrained/kd_cost.py"""
import time, paddle, paddle.nn.functional as F
import sys
from paddle_recipes.tasks.ocr_rec.distill_pretrained import ctc_distill_loss
s = paddle.randn([16, 40, 6625]); s.stop_gradient = False
t = paddle.randn([16, 40, 6625])
def clock(f, n=3):
    f(); a = time.process_time()
    for _ in range(n): f()
    return round((time.process_time() - a) / n, 3)
def full():
    ctc_distill_loss(s, t, paddle.ones([16])).backward(); s.clear_gradient()
def lsm():
    F.log_softmax(s, axis=-1).sum().backward(); s.clear_gradient()
def lsm_fwd():
    with paddle.no_grad(): F.log_softmax(s, axis=-1)
def manual():
    x = s - s.max(-1, keepdim=True).detach(); l = x - paddle.log(paddle.exp(x).sum(-1, keepdim=True)); l.sum().backward(); s.clear_gradient()
print({"kd fwd+bwd": clock(full), "log_softmax fwd+bwd": clock(lsm), "log_softmax fwd": clock(lsm_fwd), "manual lsm fwd+bwd": clock(manual)})
