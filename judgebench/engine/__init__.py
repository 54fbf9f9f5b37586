"""The scoring engine: the runner and its workers (processes, Ray), the store and the judge
cache, the run's settings and progress."""
