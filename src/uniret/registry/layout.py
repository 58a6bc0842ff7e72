"""Names of a registry's layout: the production pointer file and the folder of published bundles."""

POINTER = "production.json"
BUNDLES = "bundles"
