"""Test doubles that speak real protocols (see openai_fake)."""
