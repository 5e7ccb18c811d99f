"""Group inspection: GroupSnapshot, member protocol inference and verify-group checks."""
