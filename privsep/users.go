package privsep

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// People lists the people of this machine a worker serves: on a Mac, each folder of /Users
// owned by a user of uid 501 or more; on Linux, each account of /etc/passwd of uid 1000 or more
// (nobody aside). A home must be a real folder its user owns: root looks at the name in its
// parent (root's /Users, /home) and never below it.
func People(goos string) ([]User, error) {
	if goos == "darwin" {
		return macPeople()
	}
	return passwdPeople("/etc/passwd")
}

func macPeople() ([]User, error) {
	entries, err := os.ReadDir("/Users")
	if err != nil {
		return nil, fmt.Errorf("list /Users: %w", err)
	}
	var out []User
	for _, e := range entries {
		home := filepath.Join("/Users", e.Name())
		fi, err := os.Lstat(home)
		if err != nil || !fi.IsDir() {
			continue
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok || st.Uid < 501 {
			continue
		}
		u, err := user.LookupId(strconv.FormatUint(uint64(st.Uid), 10))
		if err != nil || filepath.Clean(u.HomeDir) != home {
			continue
		}
		if p, ok := person(u); ok {
			out = append(out, p)
		}
	}
	return out, nil
}

func passwdPeople(path string) ([]User, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read the users: %w", err)
	}
	defer f.Close()
	var out []User
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Split(sc.Text(), ":")
		if len(fields) < 7 {
			continue
		}
		uid, err := strconv.ParseUint(fields[2], 10, 32)
		if err != nil || uid < 1000 || uid == 65534 {
			continue
		}
		u, err := user.LookupId(fields[2])
		if err != nil {
			continue
		}
		if p, ok := person(u); ok {
			out = append(out, p)
		}
	}
	return out, sc.Err()
}

// person is u as a worker's user, when their home is a real folder of theirs.
func person(u *user.User) (User, bool) {
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil || !filepath.IsAbs(u.HomeDir) {
		return User{}, false
	}
	fi, err := os.Lstat(u.HomeDir)
	if err != nil || !fi.IsDir() || fi.Mode()&fs.ModeSymlink != 0 {
		return User{}, false
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || uint64(st.Uid) != uid {
		return User{}, false
	}
	p := User{UID: uint32(uid), GID: uint32(gid), Name: u.Username, Home: filepath.Clean(u.HomeDir)}
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				p.Groups = append(p.Groups, uint32(n))
			}
		}
	}
	return p, true
}
