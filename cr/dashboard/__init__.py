"""The results dashboard: a static site built from result records (DESIGN.md "Result").

    from cr.dashboard import build
    info = build(results_dir, out_dir)      # BuildInfo: counts, timings, index.html path

build.py writes the site (the static sources from dashboard/ plus data/*.js);
records.py reads one record; leaderboard.py groups them into rows. publish.py publishes
to a git results repository, server.py serves the site and takes authenticated uploads,
upload.py is the upload client; all three reuse build().
"""
from .build import BuildInfo, build

__all__ = ["BuildInfo", "build"]
