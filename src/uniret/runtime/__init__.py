"""What every stage and every domain package that reads stage outputs shares: the stage context
(params, data root, artifacts) and the atomic stage outputs with their manifest.json.

It sits above config and data and below every other package: nothing here imports a domain
package, the stages or an entry point.
"""

from uniret.runtime.context import ARTIFACTS_ENV, MANIFEST, VALIDATED_DATA, StageContext, make_context
from uniret.runtime.outputs import (
    check_outputs_outside_inputs,
    clean_stale,
    read_manifest,
    stage_output,
    stage_seconds,
    versions,
)

__all__ = [
    "ARTIFACTS_ENV",
    "MANIFEST",
    "VALIDATED_DATA",
    "StageContext",
    "check_outputs_outside_inputs",
    "clean_stale",
    "make_context",
    "read_manifest",
    "stage_output",
    "stage_seconds",
    "versions",
]
