import Glibc

/// Users and groups by name (NSS: `getpwnam_r`/`getgrnam_r`) or by number.
package enum AccountLookup {
    /// Why a name could not be looked up; never more than the name itself.
    package struct Failure: Error, Equatable, CustomStringConvertible {
        /// What went wrong.
        package let description: String
    }

    /// The gid of group `name`, or of a number (which need not exist).
    package static func groupID(_ name: String) throws(Failure) -> gid_t {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        if let id = try lookUp(
            name, kind: "group", sizeHint: _SC_GETGR_R_SIZE_MAX,
            { buffer, size in
                getgrnam_r(name, &entry, buffer, size, &found)
            }, found: { found != nil ? entry.gr_gid : nil })
        {
            return id
        }
        guard let number = UInt32(name) else { throw Failure(description: "no such group") }
        return gid_t(number)
    }

    /// The name of user `uid`, or nil when it has none here. The name is copied out while the
    /// buffer `getpwuid_r` filled is still alive.
    package static func userName(_ uid: uid_t) -> String? { passwdField(of: uid) { $0.pw_name } }

    /// The name of group `gid`, or nil when it has none here.
    package static func groupName(_ gid: gid_t) -> String? {
        var entry = group()
        var found: UnsafeMutablePointer<group>?
        var size = initialSize(_SC_GETGR_R_SIZE_MAX)
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let result = buffer.withUnsafeMutableBufferPointer { buffer -> (Int32, String?) in
                guard let base = buffer.baseAddress else { return (ENOMEM, nil) }
                let code = getgrgid_r(gid, &entry, base, buffer.count, &found)
                guard code == 0, found != nil, let name = entry.gr_name else { return (code, nil) }
                return (code, String(cString: name))
            }
            if result.0 == ERANGE && size < 1 << 20 {
                size *= 2
                continue
            }
            return result.1
        }
    }

    /// The home directory of user `uid`, or nil when it has none here.
    package static func homeDirectory(_ uid: uid_t) -> String? { passwdField(of: uid) { $0.pw_dir } }

    /// One string of user `uid`'s password entry, copied out while `getpwuid_r`'s buffer is alive.
    private static func passwdField(of uid: uid_t, _ field: (passwd) -> UnsafeMutablePointer<CChar>?) -> String? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var size = initialSize(_SC_GETPW_R_SIZE_MAX)
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let result = buffer.withUnsafeMutableBufferPointer { buffer -> (Int32, String?) in
                guard let base = buffer.baseAddress else { return (ENOMEM, nil) }
                let code = getpwuid_r(uid, &entry, base, buffer.count, &found)
                guard code == 0, found != nil, let text = field(entry) else { return (code, nil) }
                return (code, String(cString: text))
            }
            if result.0 == ERANGE && size < 1 << 20 {
                size *= 2
                continue
            }
            return result.1
        }
    }

    private static func initialSize(_ name: Int) -> Int { max(1024, Int(sysconf(Int32(name)))) }

    /// Runs a `get*nam_r` call with a buffer that grows on ERANGE; `found` reads the result while
    /// the buffer is alive.
    private static func lookUp<ID>(
        _ name: String, kind: String, sizeHint: Int,
        _ call: (UnsafeMutablePointer<CChar>, Int) -> Int32, found: () -> ID?
    ) throws(Failure) -> ID? {
        var size = initialSize(sizeHint)
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let (code, id) = buffer.withUnsafeMutableBufferPointer { buffer -> (Int32, ID?) in
                guard let base = buffer.baseAddress else { return (ENOMEM, nil) }
                let code = call(base, buffer.count)
                return (code, code == 0 ? found() : nil)
            }
            if code == ERANGE && size < 1 << 20 {
                size *= 2
                continue
            }
            switch code {
            case 0, ENOENT, ESRCH, EBADF, EPERM: return id  // "not found", as glibc may report it
            default: throw Failure(description: "looking up \(kind) failed: \(Errno(code))")
            }
        }
    }
}

extension AccountLookup {
    /// A user's uid, primary gid and every group it is in; nil when there is no such user.
    package static func account(_ name: String) -> (uid: uid_t, gid: gid_t, groups: [gid_t])? {
        var entry = passwd()
        var found: UnsafeMutablePointer<passwd>?
        var size = 4096
        while true {
            var buffer = [CChar](repeating: 0, count: size)
            let (code, ids) = buffer.withUnsafeMutableBufferPointer { buffer -> (Int32, (uid_t, gid_t)?) in
                guard let base = buffer.baseAddress else { return (ENOMEM, nil) }
                let code = getpwnam_r(name, &entry, base, buffer.count, &found)
                return (code, code == 0 && found != nil ? (entry.pw_uid, entry.pw_gid) : nil)
            }
            if code == ERANGE && size < 1 << 20 {
                size *= 2
                continue
            }
            guard let (uid, gid) = ids else { return nil }
            var count: Int32 = 64
            var groups = [gid_t](repeating: 0, count: Int(count))
            while getgrouplist(name, gid, &groups, &count) < 0 && count < 65536 {
                groups = [gid_t](repeating: 0, count: Int(count) + 64)
                count = Int32(groups.count)
            }
            return (uid, gid, Array(groups.prefix(Int(max(0, count)))))
        }
    }

    /// Why `account` could not read `path` — a directory on the way it cannot search, or the
    /// file's mode — or nil. Permission bits only (no ACLs); root reads everything.
    package static func unreadable(_ path: String, by account: (uid: uid_t, gid: gid_t, groups: [gid_t])) -> String? {
        guard account.uid != 0 else { return nil }
        func allows(_ status: stat, _ bits: (owner: mode_t, group: mode_t, other: mode_t)) -> Bool {
            if status.st_uid == account.uid { return status.st_mode & bits.owner != 0 }
            if status.st_gid == account.gid || account.groups.contains(status.st_gid) {
                return status.st_mode & bits.group != 0
            }
            return status.st_mode & bits.other != 0
        }
        var prefix = ""
        for component in path.split(separator: "/").dropLast() {
            prefix += "/" + component
            var status = stat()
            guard stat(prefix, &status) == 0 else { return "cannot stat \(prefix)" }
            if !allows(status, (S_IXUSR, S_IXGRP, S_IXOTH)) { return "no search permission on \(prefix)" }
        }
        var status = stat()
        guard stat(path, &status) == 0 else { return "cannot stat it" }
        if !allows(status, (S_IRUSR, S_IRGRP, S_IROTH)) {
            return
                "mode \(String(status.st_mode & 0o777, radix: 8)), owner uid \(status.st_uid), group gid \(status.st_gid)"
        }
        return nil
    }
}
