/*
 * cli_codec: keys and values as text, hex or base64, both ways, and JSON
 * strings. Text is printable ASCII as is and any other byte as \xNN (a
 * backslash as \\), so every byte string has one text form and reading it
 * back gives the same bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Parse a format name; -1 if unknown. */
int cli_fmt_parse(const char *name) {
    if (!strcmp(name, "text")) return CLI_FMT_TEXT;
    if (!strcmp(name, "hex")) return CLI_FMT_HEX;
    if (!strcmp(name, "base64")) return CLI_FMT_BASE64;
    return -1;
}

/* Value of a hex digit, -1 if c is none. */
static int hexval(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* Value of a base64 digit, -1 if c is none. */
static int b64val(int c) {
    const char *p = c ? strchr(B64, c) : NULL;
    return p ? (int)(p - B64) : -1;
}

/* Decode s in format f into out (see cli.h). */
int cli_decode(const char *s, cli_fmt_t f, const char *what, cli_bytes_t *out) {
    size_t n = strlen(s), k = 0;
    out->data = (char *)malloc(n + 1);
    out->size = 0;
    if (!out->data) return cli_fail(CLI_ERR, "out of memory");
    if (f == CLI_FMT_TEXT) {
        for (size_t i = 0; i < n; i++) {
            if (s[i] != '\\') {
                out->data[k++] = s[i];
            } else if (i + 1 < n && s[i + 1] == '\\') {
                out->data[k++] = '\\';
                i++;
            } else if (i + 3 < n && s[i + 1] == 'x' && hexval(s[i + 2]) >= 0 && hexval(s[i + 3]) >= 0) {
                out->data[k++] = (char)(hexval(s[i + 2]) << 4 | hexval(s[i + 3]));
                i += 3;
            } else {
                goto bad;
            }
        }
    } else if (f == CLI_FMT_HEX) {
        if (n % 2) goto bad;
        for (size_t i = 0; i < n; i += 2) {
            int hi = hexval(s[i]), lo = hexval(s[i + 1]);
            if (hi < 0 || lo < 0) goto bad;
            out->data[k++] = (char)(hi << 4 | lo);
        }
    } else {
        if (n % 4) goto bad;
        for (size_t i = 0; i < n; i += 4) {
            int v[4], pad = 0;
            for (int j = 0; j < 4; j++) {
                if (s[i + j] == '=' && i + 4 == n && j >= 2) {
                    v[j] = 0;
                    pad++;
                } else if (pad || (v[j] = b64val(s[i + j])) < 0) {
                    goto bad;
                }
            }
            uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
            out->data[k++] = (char)(w >> 16);
            if (pad < 2) out->data[k++] = (char)(w >> 8);
            if (pad < 1) out->data[k++] = (char)w;
        }
    }
    out->size = k;
    return CLI_OK;
bad:
    free(out->data);
    out->data = NULL;
    return cli_fail(CLI_USAGE, "%s '%s' is not valid %s%s", what, s,
                    f == CLI_FMT_TEXT ? "text" : f == CLI_FMT_HEX ? "hex" : "base64",
                    f == CLI_FMT_TEXT ? " (a backslash starts \\\\ or \\xNN)" : "");
}

/* Encode into a malloc'd NUL-terminated string (NULL if out of memory). */
static char *encode(const void *data, size_t n, cli_fmt_t f) {
    const unsigned char *p = (const unsigned char *)data;
    char *s = (char *)malloc(n * 4 + 4);
    size_t k = 0;
    if (!s) return NULL;
    if (f == CLI_FMT_TEXT) {
        for (size_t i = 0; i < n; i++) {
            if (p[i] == '\\') {
                s[k++] = '\\';
                s[k++] = '\\';
            } else if (p[i] >= 0x20 && p[i] < 0x7f) {
                s[k++] = (char)p[i];
            } else {
                k += (size_t)sprintf(s + k, "\\x%02x", p[i]);
            }
        }
    } else if (f == CLI_FMT_HEX) {
        for (size_t i = 0; i < n; i++) k += (size_t)sprintf(s + k, "%02x", p[i]);
    } else {
        for (size_t i = 0; i < n; i += 3) {
            uint32_t w = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
            s[k++] = B64[w >> 18 & 63];
            s[k++] = B64[w >> 12 & 63];
            s[k++] = i + 1 < n ? B64[w >> 6 & 63] : '=';
            s[k++] = i + 2 < n ? B64[w & 63] : '=';
        }
    }
    s[k] = '\0';
    return s;
}

/* Write bytes in format f. */
void cli_encode(FILE *out, const void *data, size_t n, cli_fmt_t f) {
    char *s = encode(data, n, f);
    fputs(s ? s : "<out of memory>", out);
    free(s);
}

/* Write a NUL-terminated string as a JSON string. */
void cli_json_str(FILE *out, const char *s) {
    fputc('"', out);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p < 0x20 || *p >= 0x7f) fprintf(out, "\\u%04x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

/* Write bytes in format f as a JSON string. */
void cli_encode_json(FILE *out, const void *data, size_t n, cli_fmt_t f) {
    char *s = encode(data, n, f);
    cli_json_str(out, s ? s : "<out of memory>");
    free(s);
}
