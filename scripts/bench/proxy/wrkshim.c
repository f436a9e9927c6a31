/*
 * wrkshim: an LD_PRELOAD library that makes every SSL_CTX the program
 * creates present a client certificate. wrk has no option for one.
 *
 *   BENCH_CLIENT_CERT=client.pem BENCH_CLIENT_KEY=client.key \
 *   LD_PRELOAD=./wrkshim.so wrk https://...
 *
 * Build: cc -shared -fPIC -O2 -o wrkshim.so wrkshim.c -ldl
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <openssl/ssl.h>

SSL_CTX *SSL_CTX_new(const SSL_METHOD *method)
{
	static SSL_CTX *(*real)(const SSL_METHOD *);
	if (!real)
		real = (SSL_CTX *(*)(const SSL_METHOD *))dlsym(RTLD_NEXT, "SSL_CTX_new");
	if (!real) {
		fprintf(stderr, "wrkshim: SSL_CTX_new not found\n");
		abort();
	}
	SSL_CTX *ctx = real(method);
	const char *cert = getenv("BENCH_CLIENT_CERT");
	const char *key = getenv("BENCH_CLIENT_KEY");
	if (!ctx || !cert || !key)
		return ctx;
	if (SSL_CTX_use_certificate_chain_file(ctx, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctx, key, SSL_FILETYPE_PEM) != 1) {
		fprintf(stderr, "wrkshim: cannot load %s / %s\n", cert, key);
		abort();
	}
	return ctx;
}
