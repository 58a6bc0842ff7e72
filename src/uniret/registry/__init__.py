"""Bundle registry: publishing, the production pointer, the promotion gate (rules and their config),
promotion, rollback (which stays: rejected content), pause/resume, serving notification."""

from uniret.utils.lazy import lazy_exports

# public names -> the submodule defining them (imported on first access; see uniret.utils.lazy)
_EXPORTS = {
    "basis_differences": "basis",
    "evaluation_basis": "basis",
    "bundle_dir": "bundles",
    "list_bundles": "bundles",
    "read_manifest": "bundles",
    "registry_config": "configured",
    "registry_root": "configured",
    "serving_from": "configured",
    "Control": "control",
    "read_control": "control",
    "RegistryError": "errors",
    "GateInputs": "gate",
    "decide": "gate",
    "decision_markdown": "gate",
    "latency_mode": "gate",
    "production_ref": "gate",
    "resolve_gate_config": "gate",
    "verify_bundle": "integrity",
    "verify_registry": "verify",
    "build_lineage": "lineage",
    "BUNDLES": "pointer",
    "POINTER": "pointer",
    "read_pointer": "pointer",
    "prune": "retention",
    "promote": "promotion",
    "rollback": "promotion",
}

__all__ = sorted(_EXPORTS)
__getattr__ = lazy_exports(__name__, _EXPORTS)
