"""Action entries run by the child process: ``module:function(job) -> result dict``."""
