"""The scheduling pipeline: dispatch of due occurrences and execution of actions."""
