"""A recipe that pip-installs six (test_install, test_lock)."""
from __future__ import annotations


SIX = {
    "name": "six",
    "detect": [{"type": "python", "module": "six", "distribution": "six", "attribute": "__version__"}],
    "install": [{"method": "pip", "packages": ["six=={version}"], "versions": ["1.17.0", "1.16.0"]}],
}
