#define _GNU_SOURCE
#include "csd_listen.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

int csd_listen_socket(const char *name, char *path, size_t path_size, char *problem, size_t problem_size) {
    if (path_size > 0) path[0] = 0;
    if (problem_size > 0) problem[0] = 0;
    char **names = NULL;
    int count = sd_listen_fds_with_names(1, &names);
    if (count < 0) {
        snprintf(problem, problem_size, "sd_listen_fds: %s", strerror(-count));
        return count;
    }
    int chosen = -1;
    for (int i = 0; i < count; i++) {
        const char *fd_name = names && names[i] ? names[i] : "unknown";
        if (chosen < 0 && (count == 1 || strcmp(fd_name, name) == 0)) chosen = SD_LISTEN_FDS_START + i;
    }
    for (int i = 0; i < count; i++) {
        if (SD_LISTEN_FDS_START + i != chosen) close(SD_LISTEN_FDS_START + i);
    }
    for (int i = 0; names && names[i]; i++) free(names[i]);
    free(names);
    if (count == 0) return 0;
    if (chosen < 0) {
        snprintf(problem, problem_size, "%d descriptors passed, none named '%s' (FileDescriptorName=)", count, name);
        return -ENOENT;
    }
    if (sd_is_socket_unix(chosen, SOCK_STREAM, 1, NULL, 0) <= 0) {
        snprintf(problem, problem_size, "descriptor %d is not a listening AF_UNIX stream socket", chosen);
        close(chosen);
        return -ENOTSOCK;
    }
    int flags = fcntl(chosen, F_GETFL);
    if (flags < 0 || fcntl(chosen, F_SETFL, flags | O_NONBLOCK) < 0) {
        int error = errno;
        snprintf(problem, problem_size, "descriptor %d: fcntl O_NONBLOCK: %s", chosen, strerror(error));
        close(chosen);
        return -error;
    }
    struct sockaddr_un address;
    socklen_t length = sizeof address;
    memset(&address, 0, sizeof address);
    if (getsockname(chosen, (struct sockaddr *)&address, &length) == 0 &&
        length > offsetof(struct sockaddr_un, sun_path) && address.sun_path[0] != 0) {
        size_t bytes = strnlen(address.sun_path, length - offsetof(struct sockaddr_un, sun_path));
        snprintf(path, path_size, "%.*s", (int)bytes, address.sun_path);
    }
    return chosen;
}
