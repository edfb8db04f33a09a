"""Dependency resolution: resolvelib over present software envs and installable recipes, and locks."""
