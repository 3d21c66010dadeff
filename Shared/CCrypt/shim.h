#ifndef CHATSUITE_CCRYPT_SHIM_H
#define CHATSUITE_CCRYPT_SHIM_H
/* libxcrypt (Debian's libcrypt-dev): bcrypt ($2b$) through crypt_gensalt_rn / crypt_rn. */
#include <crypt.h>
#endif
