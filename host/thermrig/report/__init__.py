"""`thermrig report`: a campaign's tables and plots from InfluxDB, as one self-contained HTML file."""
