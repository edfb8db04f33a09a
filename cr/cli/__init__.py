"""The `cr` command line: thin click commands; the only place that prints or exits."""
