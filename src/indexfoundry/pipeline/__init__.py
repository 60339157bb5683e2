"""The pipeline runner (plan, skip, --force), run manifests, run utilities."""
