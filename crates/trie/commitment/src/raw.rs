//! [`RawTrie`]: an in-memory Merkle-Patricia trie over arbitrary byte keys,
//! where a key may be a prefix of another (branches then carry values). It
//! uses the same node encoding as the hashed trie; it is the oracle for the
//! plain-key Ethereum trie vectors and a small tool for ad-hoc roots.

use alloy_primitives::{B256, keccak256};

use crate::nibbles::unpack_nibbles;
use crate::node::{
    EMPTY_ROOT, KeccakCount, NodeRef, compact_nibbles, encode_branch, encode_extension, encode_leaf,
};

#[derive(Clone, Debug)]
enum Node {
    Leaf {
        path: Vec<u8>,
        value: Vec<u8>,
    },
    Extension {
        path: Vec<u8>,
        child: Box<Node>,
    },
    Branch {
        children: Box<[Option<Node>; 16]>,
        value: Option<Vec<u8>>,
    },
}

/// An in-memory trie over plain byte keys (no hashing of keys).
///
/// Insert an empty value to delete a key, as the Ethereum trie does.
#[derive(Clone, Debug, Default)]
pub struct RawTrie {
    root: Option<Node>,
}

impl RawTrie {
    /// An empty trie.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`; an empty value removes the key.
    pub fn insert(&mut self, key: &[u8], value: &[u8]) {
        if value.is_empty() {
            self.remove(key);
            return;
        }
        let path = unpack_nibbles(key);
        self.root = Some(insert(self.root.take(), &path, value.to_vec()));
    }

    /// Removes `key` if present.
    pub fn remove(&mut self, key: &[u8]) {
        let path = unpack_nibbles(key);
        if let Some(root) = self.root.take() {
            self.root = remove(root, &path);
        }
    }

    /// The root hash (`EMPTY_ROOT` for an empty trie).
    pub fn root(&self) -> B256 {
        match &self.root {
            None => EMPTY_ROOT,
            Some(node) => {
                let mut out = Vec::new();
                encode(node, &mut out);
                keccak256(&out)
            }
        }
    }
}

fn common(a: &[u8], b: &[u8]) -> usize {
    a.iter().zip(b).take_while(|(x, y)| x == y).count()
}

/// Puts a key's remaining `path` into a new branch: as its value when the
/// path ends here, else as a leaf child.
fn leaf_or_value(
    path: &[u8],
    value: Vec<u8>,
    children: &mut [Option<Node>; 16],
    slot: &mut Option<Vec<u8>>,
) {
    if path.is_empty() {
        *slot = Some(value);
    } else {
        children[path[0] as usize] = Some(Node::Leaf {
            path: path[1..].to_vec(),
            value,
        });
    }
}

fn wrap(prefix: &[u8], node: Node) -> Node {
    if prefix.is_empty() {
        node
    } else {
        Node::Extension {
            path: prefix.to_vec(),
            child: Box::new(node),
        }
    }
}

fn insert(node: Option<Node>, path: &[u8], value: Vec<u8>) -> Node {
    match node {
        None => Node::Leaf {
            path: path.to_vec(),
            value,
        },
        Some(Node::Leaf {
            path: lp,
            value: lv,
        }) => {
            if lp == path {
                return Node::Leaf { path: lp, value };
            }
            let c = common(&lp, path);
            let mut children: Box<[Option<Node>; 16]> = Box::default();
            let mut bvalue = None;
            leaf_or_value(&lp[c..], lv, &mut children, &mut bvalue);
            leaf_or_value(&path[c..], value, &mut children, &mut bvalue);
            wrap(
                &path[..c],
                Node::Branch {
                    children,
                    value: bvalue,
                },
            )
        }
        Some(Node::Extension { path: ep, child }) => {
            let c = common(&ep, path);
            if c == ep.len() {
                return Node::Extension {
                    path: ep,
                    child: Box::new(insert(Some(*child), &path[c..], value)),
                };
            }
            let mut children: Box<[Option<Node>; 16]> = Box::default();
            let old = if ep.len() == c + 1 {
                *child
            } else {
                Node::Extension {
                    path: ep[c + 1..].to_vec(),
                    child,
                }
            };
            children[ep[c] as usize] = Some(old);
            let mut bvalue = None;
            if path.len() == c {
                bvalue = Some(value);
            } else {
                let n = path[c] as usize;
                children[n] = Some(insert(children[n].take(), &path[c + 1..], value));
            }
            wrap(
                &path[..c],
                Node::Branch {
                    children,
                    value: bvalue,
                },
            )
        }
        Some(Node::Branch {
            mut children,
            value: bv,
        }) => {
            if path.is_empty() {
                return Node::Branch {
                    children,
                    value: Some(value),
                };
            }
            let n = path[0] as usize;
            children[n] = Some(insert(children[n].take(), &path[1..], value));
            Node::Branch {
                children,
                value: bv,
            }
        }
    }
}

/// Prepends `prefix` to a node that moved up.
fn prepend(prefix: &[u8], node: Node) -> Node {
    match node {
        Node::Leaf { path, value } => Node::Leaf {
            path: [prefix, &path].concat(),
            value,
        },
        Node::Extension { path, child } => Node::Extension {
            path: [prefix, &path].concat(),
            child,
        },
        branch => wrap(prefix, branch),
    }
}

fn remove(node: Node, path: &[u8]) -> Option<Node> {
    match node {
        Node::Leaf { path: lp, value } => (lp != path).then_some(Node::Leaf { path: lp, value }),
        Node::Extension { path: ep, child } => {
            if !path.starts_with(&ep) {
                return Some(Node::Extension { path: ep, child });
            }
            remove(*child, &path[ep.len()..]).map(|c| prepend(&ep, c))
        }
        Node::Branch {
            mut children,
            mut value,
        } => {
            if path.is_empty() {
                value = None;
            } else {
                let n = path[0] as usize;
                if let Some(c) = children[n].take() {
                    children[n] = remove(c, &path[1..]);
                }
            }
            let count = children.iter().filter(|c| c.is_some()).count();
            match (count, value) {
                (0, None) => None,
                (0, Some(v)) => Some(Node::Leaf {
                    path: Vec::new(),
                    value: v,
                }),
                (1, None) => {
                    let n = children.iter().position(Option::is_some)?;
                    let child = children[n].take()?;
                    Some(prepend(&[n as u8], child))
                }
                (_, value) => Some(Node::Branch { children, value }),
            }
        }
    }
}

/// Appends the RLP of `node`.
fn encode(node: &Node, out: &mut Vec<u8>) {
    match node {
        Node::Leaf { path, value } => {
            let mut compact = Vec::with_capacity(path.len() / 2 + 1);
            compact_nibbles(path, true, &mut compact);
            encode_leaf(&compact, value, out);
        }
        Node::Extension { path, child } => {
            let r = child_ref(child);
            encode_extension(path, &r, out);
        }
        Node::Branch { children, value } => {
            let mut refs: [Option<NodeRef>; 16] = [None; 16];
            for (r, c) in refs.iter_mut().zip(children.iter()) {
                *r = c.as_ref().map(child_ref);
            }
            encode_branch(&refs, value.as_deref(), out);
        }
    }
}

fn child_ref(node: &Node) -> NodeRef {
    let mut out = Vec::new();
    encode(node, &mut out);
    NodeRef::of_rlp(&out, &mut KeccakCount::default())
}
