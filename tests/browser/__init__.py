"""Tests that drive the built book and the live notebooks in headless Chromium."""
