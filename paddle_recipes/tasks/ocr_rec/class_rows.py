"""Which dict the class rows of a set of weights follow (rows follow characters, weights.dict_remap): an inference
model folder's dict, Global.pretrained_dict, or the class names saved with one of our checkpoints."""
from __future__ import annotations

from pathlib import Path
from typing import List, Sequence, Tuple

from ...assets import resolve_path
from ...formats.inference_files import folder_model_name, is_inference_model
from ...weights.dict_remap import ClassMap, checkpoint_class_names
from .charset import CharDict, CharDictError, inference_yml_chars, model_dict_file


def weights_dict(path: str, pretrained_dict: str = "") -> Tuple[List[str], str] | None:
    """(the characters the weights at `path` were trained with, where they were read), or None when nothing says
    (rows by position): ``pretrained_dict`` (Global.pretrained_dict) when set; else an inference model folder's
    dict (its inference.yml or character_dict.txt; an inference.yml without a dict and no character_dict.txt is a
    CharDictError, unless it names another task's model: None, and the importer says which); else the class names
    saved with one of our checkpoints."""
    if pretrained_dict:
        named = CharDict.from_file(pretrained_dict)
        return named.chars, f"Global.pretrained_dict={pretrained_dict}"
    if is_inference_model(path):
        found = model_dict_file(path)
        if found is not None:
            return CharDict.from_file(found).chars, str(found)
        folder = Path(path) if Path(path).is_dir() else Path(path).parent
        if not (folder / "inference.yml").is_file():
            return None
        other = folder_model_name(folder)  # read only here: a folder with a dict needs no model name
        if other and not other.endswith("_rec"):
            return None  # another task's model (e.g. a det folder): the importer says which, in one line
        try:
            inference_yml_chars(str(folder / "inference.yml"))  # raises: model_dict_file found no dict in it
        except CharDictError as exc:
            raise CharDictError(f"{exc}; name the dict these weights were trained with by Global.pretrained_dict"
                                ) from None
        return None
    chars = checkpoint_class_names(path)
    return (chars, f"{path} (the checkpoint's class names)") if chars else None


def weights_class_map(path: str, chars: Sequence[str], pretrained_dict: str = "") -> ClassMap | None:
    """How the class rows of the weights at `path` map to a run's `chars` (weights_dict; None: by position).
    ``pretrained_dict`` is resolved like every dict path (assets.resolve_path)."""
    found = weights_dict(path, resolve_path(pretrained_dict) if pretrained_dict else "")
    return None if found is None else ClassMap(tuple(found[0]), tuple(chars), found[1])
