// The system zlib (Debian: zlib1g-dev; Apple platforms: the SDK's), for gzip request bodies.
#include <zlib.h>
