"""Recording each trial's model exchange on the host (issue 30): what the gateway forwarded and got back."""
