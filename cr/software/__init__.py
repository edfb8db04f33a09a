"""Software: recipes (how to detect/install), software envs (what is present), detection, installation."""
