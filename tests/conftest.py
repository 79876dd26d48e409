import os
import sys

# the operator harness is imported by the family test modules as ``harness``
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'ops'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), 'golden'))
