"""Meta-evaluation core: pure numpy/scipy/pandas statistics; imports nothing from judgebench."""
