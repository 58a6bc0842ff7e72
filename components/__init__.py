"""The Kubeflow components of the DAG's stages: one generic stage component plus the three that
publish UI outputs (evaluate, gate, report), generated from the stage list.

They live in the package, uniret.kubeflow.components; this folder is the entry point the design
names. `load_components(image)` gives stage name -> component.
"""

from uniret.kubeflow.components import PUBLISHERS, load_components, stage_task  # noqa: F401
