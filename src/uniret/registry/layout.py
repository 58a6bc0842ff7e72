"""Names of a registry's layout: the production pointer file, the folder of published bundles, their manifests."""

POINTER = "production.json"
BUNDLES = "bundles"
CANARY = "canary.json"  # the running (or last) canary: candidate, share, decision (uniret.registry.canary)
CONTROL = "control.json"  # what people decided about promotion: a pause, rejected content (uniret.registry.control)
MANIFEST = "manifest.json"  # in each bundle: what it holds; its `version` is its folder's name once published
