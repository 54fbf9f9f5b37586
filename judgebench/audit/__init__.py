"""`judgebench audit`: is a metric trustworthy on this data?

sentinels  compute the registered sentinel metrics on a scores table (per human column)
blocks     agreement with people per (human, statistic, level, grouping), significance
           clusters of metrics and sentinels together, and the sentinel gate
gate       the gate rule and what a good-looking sentinel means
"""
