"""The task layer behind the LEVANTE lmms-eval tasks: option orders, prompts, parsing, controls and records."""
