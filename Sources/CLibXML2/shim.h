#ifndef PARLEY_CLIBXML2_SHIM_H
#define PARLEY_CLIBXML2_SHIM_H

/* Debian builds libxml2 with ICU; if <libxml/encoding.h> pulls in <unicode/ucnv.h>, any target
   that also sees Foundation fails a clean build with two definitions of UErrorCode. We never
   use libxml2's ICU conversions, so hide them before anything includes encoding.h. */
#include <libxml/xmlversion.h>
#undef LIBXML_ICU_ENABLED

#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/SAX2.h>
#include <libxml/xmlerror.h>
#include <libxml/dict.h>
#include <libxml/tree.h>
#include <libxml/xmlschemas.h>

/* xmlFree is a global function-pointer variable, which Swift 6 refuses to touch. */
static inline void parley_xmlFree(void *pointer) { xmlFree(pointer); }

#endif
