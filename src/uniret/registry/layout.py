"""Names of a registry's layout: the production pointer file and the folder of published bundles."""

POINTER = "production.json"
BUNDLES = "bundles"
CONTROL = "control.json"  # what people decided about promotion: a pause, rejected content (uniret.registry.control)
