"""Where jobs are kept: the job store (a directory or a URL), its lock (one owner per job), listing
and retention of job directories."""
