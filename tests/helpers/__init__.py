"""Helpers shared by several test modules (each named after the test module it came from).

Test modules import them as `from helpers.NAME import ...` (pytest puts tests/ on sys.path,
as it does for conftest); a test module never imports another test module. Fixtures that a
module needs by name (the dashboard's browser and page) are imported with the helpers.
"""
