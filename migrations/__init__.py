"""Bundled migration paths (YAML, validated by kafka_coop.rollout.MigrationSpec); see README.md here."""
