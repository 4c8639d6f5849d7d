// A shared library that is not a distmetrics plugin: no build record, no entry point.
extern "C" __attribute__((visibility("default"))) int not_a_plugin_answer() { return 42; }
