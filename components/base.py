"""The decorator every stage component uses: same image, no pip install at task start.

The image already holds uniret and kfp (requirements.txt), so `install_kfp_package=False`
keeps tasks offline and fast, on Kubernetes and under kfp.local alike.
"""

from __future__ import annotations

import functools

from kfp import dsl

from components.image import IMAGE

stage_component = functools.partial(dsl.component, base_image=IMAGE, install_kfp_package=False)
