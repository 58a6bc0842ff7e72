"""Image tags have one source, params.yaml `pipeline:`; k8s/ takes them through kustomize `images:`.

The manifests name placeholder images (`uniret-serving`, `uniret-pipeline`); kustomization.yaml's
`images:` block, generated here from params.yaml (`uniret pipeline image --kustomize ...`),
maps them to the real names and tags when `kubectl apply -k` renders them.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from uniret.config.loader import ConfigError
from uniret.config.pipeline import PipelineConfig
from uniret.utils.files import atomic_write_text

SERVING_PLACEHOLDER = "uniret-serving"  # k8s/deployment.yaml: serving (params pipeline.serving_image)
PIPELINE_PLACEHOLDER = "uniret-pipeline"  # k8s/overlays/cronjob/cronjob.yaml: the nightly job (params pipeline.image)
IMAGES_KEY = "images:"
HEADER = "# generated from params.yaml `pipeline:` by `uniret pipeline image --kustomize`; do not edit\n"


# A short hash of the code and pins an image holds (docker/build.sh labels the image with it): the
# container tests run only against an image built from the tree under test
SOURCE_LABEL = "uniret.source"
SOURCE_ID_CMD = ("find src -name '*.py' | LC_ALL=C sort | xargs cat requirements.txt requirements-dev.txt requirements.lock "
                 "pyproject.toml | sha256sum | cut -c1-16")


def source_id(root: str | os.PathLike) -> str:
    """The source hash of the tree at `root`, as docker/build.sh computes it for the image label."""
    import subprocess

    out = subprocess.run(["bash", "-c", SOURCE_ID_CMD], cwd=root, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def image_source_id(engine: list[str], tag: str, env: dict[str, str] | None = None) -> str | None:
    """The source label of a built image, None when it has none."""
    import subprocess

    out = subprocess.run([*engine, "image", "inspect", "--format", f'{{{{ index .Config.Labels "{SOURCE_LABEL}" }}}}',
                          tag], capture_output=True, text=True, env=env, timeout=60)
    label = out.stdout.strip()
    return label if out.returncode == 0 and label and label != "<no value>" else None


def stale_image_reason(engine: list[str], tag: str, root: str | os.PathLike, env: dict[str, str] | None = None
                       ) -> str | None:
    """Why the image at `tag` does not hold the tree at `root` (None: it does)."""
    label = image_source_id(engine, tag, env)
    here = source_id(root)
    if label != here:
        return f"image {tag} holds source {label or 'unlabelled'}, this tree is {here}: run `make image`"
    return None


def split_image(ref: str) -> tuple[str, str]:
    """'registry:5000/org/name:tag' -> ('registry:5000/org/name', 'tag'); no tag: 'latest'."""
    slash = ref.rfind("/")
    colon = ref.rfind(":")
    if colon > slash:
        return ref[:colon], ref[colon + 1:]
    return ref, "latest"


def kustomize_images(cfg: PipelineConfig) -> list[dict[str, str]]:
    """The `images:` entries mapping the manifests' placeholders to params.yaml's tags."""
    out = []
    for placeholder, ref in ((SERVING_PLACEHOLDER, cfg.serving_image), (PIPELINE_PLACEHOLDER, cfg.image)):
        name, tag = split_image(ref)
        out.append({"name": placeholder, "newName": name, "newTag": tag})
    return out


def render_images_block(cfg: PipelineConfig) -> str:
    """The `images:` block as YAML text, with its generated-file header."""
    return HEADER + yaml.safe_dump({"images": kustomize_images(cfg)}, sort_keys=False)


def write_kustomization_images(path: str | os.PathLike, cfg: PipelineConfig) -> bool:
    """Replace the trailing `images:` block of kustomization.yaml `path` (or append one); True if changed."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: kustomization not found")
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    idx = next((i for i, ln in enumerate(lines) if ln.startswith(IMAGES_KEY)), None)
    cut = len(lines)
    if idx is not None:
        if any(ln.strip() and not ln.startswith((" ", "-", "#")) for ln in lines[idx + 1:]):
            raise ConfigError(f"{path}: `images:` must be the last block (it is generated)")
        cut = idx - 1 if idx and lines[idx - 1] == HEADER else idx
    if cut and not lines[cut - 1].endswith("\n"):
        lines[cut - 1] += "\n"
    text = "".join(lines[:cut]) + render_images_block(cfg)
    if text == path.read_text(encoding="utf-8"):
        return False
    atomic_write_text(path, text)
    return True
