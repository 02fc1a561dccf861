"""Collection: compile-event capture and sync-aware timers (the only hot-path code)."""
