"""The spec stage: load YAML with positions, check structure with pydantic."""
