"""Textbook voting profiles shared by the aggregation tests."""

from meta_eval.aggregation import Profile

# The Tennessee capital election (Wikipedia's running example for voting rules): voters
# rank the four cities by distance from home.
TENNESSEE = Profile.from_rankings(
    [
        ["Memphis", "Nashville", "Chattanooga", "Knoxville"],
        ["Nashville", "Chattanooga", "Knoxville", "Memphis"],
        ["Chattanooga", "Knoxville", "Nashville", "Memphis"],
        ["Knoxville", "Chattanooga", "Nashville", "Memphis"],
    ],
    weights=[42, 26, 15, 17],
)
