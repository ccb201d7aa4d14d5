package ulp

import "unicode/utf16"

// Objects, not only handles: what the handles a connection's commands name
// stand for, learnt from the commands that create them. SMB2: TREE_CONNECT
// gives a TreeId its share path ([MS-SMB2] §2.2.9, §2.2.10), CREATE a
// FileId its name (§2.2.13, §2.2.14) until CLOSE; a related member of a
// compound acts on the file its compound's CREATE opened (§3.2.4.1.4,
// FileId all ones). NFS: LOOKUP / CREATE name a file handle (NFSv3 LOOKUP3
// reply's object, CREATE3's post_op_fh3, RFC 1813 §3.3.3, §3.3.8); NFSv4
// PUTFH/PUTROOTFH, LOOKUP and OPEN name the current filehandle, which a
// GETFH in the reply returns (RFC 8881 §16.2.3.1.1, §18.8). A READ or WRITE
// then shows its file: smb2.filename, smb2.share, nfs.name, and
// Command.Object.

// maxObjects bounds each table of a connection; beyond it new names are
// not learnt (note ulp.objects_full, once).
const maxObjects = 4096

// maxName bounds a name kept (octets).
const maxName = 512

type objects struct {
	trees map[uint32]string   // SMB2 TreeId → share path
	files map[[16]byte]string // SMB2 FileId → name
	fhs   map[string]string   // NFS file handle → name
	full  bool
}

// room says whether a table of n entries may grow; the first refusal
// raises the note.
func (c *Conn) room(at At, n int) bool {
	if n < maxObjects {
		return true
	}
	if !c.objs.full {
		c.objs.full = true
		c.finding(at, false, CodeObjectsFull, "%s: more than %d handles named on the connection: names of newer ones are not kept", protoTitle[c.proto], maxObjects)
	}
	return false
}

func (c *Conn) putTree(at At, tree uint32, share string) {
	if c.objs.trees == nil {
		c.objs.trees = map[uint32]string{}
	}
	if _, ok := c.objs.trees[tree]; ok || c.room(at, len(c.objs.trees)) {
		c.objs.trees[tree] = share
	}
}

func (c *Conn) putFile(at At, fid [16]byte, name string) {
	if c.objs.files == nil {
		c.objs.files = map[[16]byte]string{}
	}
	if _, ok := c.objs.files[fid]; ok || c.room(at, len(c.objs.files)) {
		c.objs.files[fid] = name
	}
}

func (c *Conn) putFH(at At, fh []byte, name string) {
	if name == "" || len(fh) == 0 || len(fh) > 128 {
		return
	}
	if c.objs.fhs == nil {
		c.objs.fhs = map[string]string{}
	}
	if _, ok := c.objs.fhs[string(fh)]; ok || c.room(at, len(c.objs.fhs)) {
		c.objs.fhs[string(fh)] = name
	}
}

// fhName is the name of an NFS file handle, "" when not known.
func (c *Conn) fhName(fh []byte) string { return c.objs.fhs[string(fh)] }

// utf16Name decodes a UTF-16LE name (SMB2 paths), at most maxName octets.
func utf16Name(b []byte) string {
	b = b[:min(len(b), 2*maxName)&^1]
	u := make([]uint16, len(b)/2)
	for i := range u {
		u[i] = le16(b[2*i:])
	}
	return clip(string(utf16.Decode(u)))
}

func clip(s string) string {
	if len(s) > maxName {
		return s[:maxName]
	}
	return s
}

// joinPath names an object in a directory: dir/name ("/" the root; an
// unknown directory gives the name alone).
func joinPath(dir, name string) string {
	switch dir {
	case "":
		return clip(name)
	case "/":
		return clip("/" + name)
	}
	return clip(dir + "/" + name)
}

// smbObject is what a Command names for an SMB2 message: the share and
// the file in it (\\server\share\dir\file), or either alone.
func smbObject(share, file string) string {
	switch {
	case share == "":
		return file
	case file == "":
		return share
	}
	return clip(share + `\` + file)
}

// fileIDAt is the offset in an SMB2 request body of its FileId, by command
// ([MS-SMB2] §2.2.15 CLOSE, §2.2.17 FLUSH, §2.2.19 READ, §2.2.21 WRITE,
// §2.2.26 LOCK, §2.2.31 IOCTL, §2.2.33 QUERY_DIRECTORY, §2.2.35
// CHANGE_NOTIFY, §2.2.37 QUERY_INFO, §2.2.39 SET_INFO); -1 for none.
func fileIDAt(cmd uint16) int {
	switch cmd {
	case 6, 7, 10, 11, 14, 15:
		return 8
	case 8, 9, 17:
		return 16
	case 16:
		return 24
	}
	return -1
}

// smb2Names gives an SMB2 message its share and file names, and learns
// them: the request's from its TreeId, its CREATE or TREE_CONNECT path or
// its FileId; the response's from its task (t), which also learns the
// TreeId a TREE_CONNECT response and the FileId a CREATE response returns.
func (c *Conn) smb2Names(at At, h []byte, cmd uint16, resp bool, status uint32, t *task, m *Message) {
	st := &c.smb
	flags := le32(h[16:])
	body := h[64:]
	var tree uint32
	if flags&2 == 0 {
		tree = le32(h[36:])
	}
	share := c.objs.trees[tree]
	if !resp && flags&4 != 0 && tree == 0xFFFFFFFF { // a related member names the previous member's tree ([MS-SMB2] §3.2.4.1.4)
		share = c.qn.shares.last
	}
	file := ""
	if !resp {
		switch {
		case cmd == 3 && len(body) >= 8: // TREE_CONNECT: PathOffset, PathLength from the header
			if off, n := int(le16(body[4:])), int(le16(body[6:])); off >= 64 && off+n <= len(h) {
				share = utf16Name(h[off : off+n])
			}
		case cmd == 5 && len(body) >= 48: // CREATE: NameOffset, NameLength
			if off, n := int(le16(body[44:])), int(le16(body[46:])); off >= 64 && off+n <= len(h) {
				file = utf16Name(h[off : off+n])
				if file == "" {
					file = `\` // the share's root
				}
				st.related = file
			}
		default:
			if off := fileIDAt(cmd); off >= 0 && len(body) >= off+16 {
				var fid [16]byte
				copy(fid[:], body[off:off+16])
				if fid == relatedFileID && flags&4 != 0 {
					file = st.related
				} else {
					file = c.objs.files[fid]
				}
				if cmd == 6 && t != nil && fid != relatedFileID {
					t.fid = fid // forgotten when the CLOSE succeeds
				}
			}
		}
		c.qn.shares.last = share
		if t != nil {
			t.cmd.Object = smbObject(share, file)
			t.file, t.share = file, share
			c.shareEnter(t, share) // its share's queue (sharequeue.go)
		}
	} else if t != nil {
		share, file = t.share, t.file
		switch {
		case cmd == 3 && status == 0 && share != "": // TREE_CONNECT response: its TreeId
			c.putTree(at, le32(h[36:]), share)
		case cmd == 5 && status == 0 && len(body) >= 80 && file != "": // CREATE response: FileId at 64
			var fid [16]byte
			copy(fid[:], body[64:80])
			c.putFile(at, fid, file)
		case cmd == 6 && status == 0 && t.fid != relatedFileID:
			delete(c.objs.files, t.fid)
		}
	}
	if share != "" {
		m.s(fSMB2Share, share)
	}
	if file != "" {
		m.s(fSMB2Filename, file)
	}
}

// relatedFileID is the FileId of a related compound member: the file the
// compound's previous operation opened ([MS-SMB2] §3.2.4.1.4).
var relatedFileID = [16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}

// opaqueBytes reads a variable-length opaque of at most max octets.
func (x *xdr) opaqueBytes(max int) []byte {
	n := int(x.u32())
	if !x.ok || n > max || x.off+n > len(x.b) {
		x.ok = false
		return nil
	}
	b := x.b[x.off : x.off+n]
	x.skip((n + 3) &^ 3)
	return b
}

// nfs3DirOp says whether an NFSv3 procedure's arguments start with
// diropargs3 (a directory and a name, RFC 1813 §3.3): LOOKUP, CREATE,
// MKDIR, SYMLINK, MKNOD, REMOVE, RMDIR.
func nfs3DirOp(proc uint32) bool { return proc == 3 || proc >= 8 && proc <= 13 }

// nfs3Object names the object an NFSv3 call acts on (its first argument,
// a file handle, or diropargs3), reading a copy of the walker.
func (c *Conn) nfs3Object(x xdr, proc uint32) string {
	if proc == 0 || proc > 21 {
		return ""
	}
	fh := x.opaqueBytes(64)
	if !x.ok {
		return ""
	}
	name := c.fhName(fh)
	if nfs3DirOp(proc) {
		n := x.opaqueBytes(maxName)
		if !x.ok {
			return name
		}
		return joinPath(name, string(n))
	}
	return name
}

// nfs3Learn learns the file handle an NFS reply returns for the object its
// call named: NFSv3 LOOKUP3resok's object (RFC 1813 §3.3.3), CREATE,
// MKDIR, SYMLINK, MKNOD's post_op_fh3 (§3.3.8).
func (c *Conn) nfs3Learn(at At, x xdr, t *task, proc uint32) {
	if t.cmd.Object == "" {
		return
	}
	switch {
	case proc == 3:
	case proc >= 8 && proc <= 11:
		if x.u32() != 1 {
			return
		}
	default:
		return
	}
	if fh := x.opaqueBytes(64); x.ok {
		c.putFH(at, fh, t.cmd.Object)
	}
}
