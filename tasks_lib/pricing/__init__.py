"""Model prices: the table (LiteLLM's format), and the cost of one model call from it."""
