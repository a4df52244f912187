"""The Lambda's runtime wiring: the batch handler (handler), the service it builds from
settings and AWS clients (service), and the cold-start and SnapStart hooks (coldstart,
snapstart).

The top of the layer: may import every other package; nothing in the layer imports it
(only functions/interruption/app.py and the local tools do).
"""
