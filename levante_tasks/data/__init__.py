"""LEVANTE data layer: read a release, validate it, and build one evaluation dataset per task."""
