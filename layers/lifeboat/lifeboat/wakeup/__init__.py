"""Deferred work that comes back through the queue: the wake-up's model (model), its
encoding as a queue message (codec) and the text operators see (format).

May import model/ and events/; imported by flow/, aws/ (the scheduler seam) and decide/.
"""
