/* A shared object that is not a Weft plugin: it lacks the entry symbol. The loader must report it
 * and carry on. */
#include "weft/plugin.h"

WEFT_PLUGIN_EXPORT int weft_not_the_entry(void);
WEFT_PLUGIN_EXPORT int weft_not_the_entry(void) { return 42; }
