"""Analysis of recorded series: step responses, throttling, steady state."""
