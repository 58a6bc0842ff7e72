"""Names of a registry's layout: the production pointer file and the folder of published bundles."""

POINTER = "production.json"
BUNDLES = "bundles"
CANARY = "canary.json"  # the running (or last) canary: candidate, share, decision (uniret.registry.canary)
CONTROL = "control.json"  # what people decided about promotion: a pause, rejected content (uniret.registry.control)
