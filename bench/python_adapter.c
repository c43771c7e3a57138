// SPDX-License-Identifier: BSD-3-Clause
// A ComIn plugin that runs a Python script, for the reference Python plugin of the in-situ
// benchmark (bench/python_reference_plugin.py; docs/performance.md, "Against a Python plugin").
//
// The plugin entry's options are a command line: the script, then its arguments (sys.argv).
// The script calls ComIn's C interface through ctypes (bench/comin_ctypes.py) and registers its
// callbacks as ctypes function pointers, which take the GIL when the host calls them. Between
// callbacks the GIL is released, so a Python thread of the script can run while the host
// computes. Written against ComIn's C interface only: the same binary loads into finecast-host
// and under the real ComIn.
//
// Why not ComIn's own adapter (plugins/python_adapter of ComIn 0.3.0): its sources in
// ../shared/third_party/comin-0.3.0 do not compile against that release's comin.h
// (MAX_LEN_VAR_NAME, COMIN_TYPEID_*, comin_var_get_pos are not declared there, and
// libcomin 0.3.0 exports no comin_var_get_pos). It also keeps the GIL while the host runs.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdio.h>

#include "comin.h"

static const char* const kWhere = "finecast python_adapter";

/// Runs the script of this plugin instance with the GIL held; returns 0 on success.
static int run_script(const char* options, int len) {
  PyObject* shlex = PyImport_ImportModule("shlex");
  PyObject* argv = shlex ? PyObject_CallMethod(shlex, "split", "s#", options, (Py_ssize_t)len) : NULL;
  Py_XDECREF(shlex);
  if (!argv || !PyList_Check(argv) || PyList_Size(argv) < 1) {
    Py_XDECREF(argv);
    if (PyErr_Occurred()) PyErr_Print();
    fprintf(stderr, "%s: the plugin options must start with the Python script to run\n", kWhere);
    return 1;
  }
  PySys_SetObject("argv", argv);
  const char* path = PyUnicode_AsUTF8(PyList_GetItem(argv, 0));
  FILE* file = path ? fopen(path, "r") : NULL;
  if (!file) {
    fprintf(stderr, "%s: cannot read the Python script '%s'\n", kWhere, path ? path : "?");
    Py_DECREF(argv);
    return 1;
  }
  PyObject* globals = PyDict_New();
  PyDict_SetItemString(globals, "__builtins__", PyEval_GetBuiltins());
  PyObject* name = PyUnicode_FromString("__comin_plugin__");
  PyObject* file_name = PyUnicode_FromString(path);
  PyDict_SetItemString(globals, "__name__", name);
  PyDict_SetItemString(globals, "__file__", file_name);
  Py_DECREF(name);
  Py_DECREF(file_name);
  // The module's globals must outlive this call: the script's callbacks use them.
  PyObject* result = PyRun_FileEx(file, path, Py_file_input, globals, globals, 1);
  Py_DECREF(argv);
  if (!result) {
    // PyErr_Print would end the process on SystemExit (argparse's --help or a usage error) and
    // leave the other ranks waiting; the host is stopped through ComIn instead.
    if (PyErr_ExceptionMatches(PyExc_SystemExit)) {
      PyErr_Clear();
      fprintf(stderr, "%s: the Python script '%s' exited while loading (see its message above)\n", kWhere, path);
    } else {
      PyErr_Print();
      fprintf(stderr, "%s: the Python script '%s' failed (traceback above)\n", kWhere, path);
    }
    return 1;
  }
  Py_DECREF(result);
  return 0;
}

void comin_main(void) {
  const char* options = NULL;
  int len = 0;
  comin_current_get_plugin_options(&options, &len);
  if (!Py_IsInitialized()) {
    // Extension modules (numpy, mpi4py, torch) take libpython's symbols from the global scope;
    // the host loaded this plugin, and libpython with it, with RTLD_LOCAL.
    if (!dlopen(FINECAST_LIBPYTHON, RTLD_NOW | RTLD_GLOBAL)) {
      fprintf(stderr, "%s: cannot load %s: %s\n", kWhere, FINECAST_LIBPYTHON, dlerror());
      comin_plugin_finish(kWhere, "cannot load libpython");
      return;
    }
    Py_InitializeEx(0);   // no Python signal handlers: the host owns its signals
    PyEval_SaveThread();  // from here on, whoever runs Python takes the GIL
  }
  const PyGILState_STATE gil = PyGILState_Ensure();
  const int failed = run_script(options ? options : "", options ? len : 0);
  PyGILState_Release(gil);
  if (failed) comin_plugin_finish(kWhere, "the Python plugin script failed");
}
