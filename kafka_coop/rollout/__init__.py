"""Rollout planning: migrations as data, plans and gates."""
