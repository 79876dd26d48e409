# The alias package, the nose stand-in and the pytest plugin are the harness's, loaded by
# scripts/run_mxnet_unittests.py in its pytest children; they are not tests of this suite.
collect_ignore = ['alias', 'shims', 'harness_plugin.py']
