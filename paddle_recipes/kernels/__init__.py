"""Our compiled CPU ops, each Python wrapper beside its C++ source: `affine` (affine.cc: BN/affine maps),
`depthwise` (depthwise_conv2d.cc), `build` (compile once per machine, cached; the load-once rule)."""
