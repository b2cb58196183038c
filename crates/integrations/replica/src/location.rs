//! Where a datadir is published: `s3://bucket/prefix`.

use std::fmt;
use std::str::FromStr;

use crate::error::ReplicaError;

/// A bucket and the prefix under which one datadir's objects live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BucketUrl {
    /// The bucket's name.
    pub bucket: String,
    /// The prefix inside it (no leading or trailing `/`; may be empty).
    pub prefix: String,
}

impl BucketUrl {
    /// The object key of `name` under the prefix.
    pub fn key(&self, name: &str) -> String {
        if self.prefix.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.prefix)
        }
    }
}

impl FromStr for BucketUrl {
    type Err = ReplicaError;

    fn from_str(url: &str) -> Result<BucketUrl, ReplicaError> {
        let bad = |what: &str| ReplicaError::Url {
            url: url.to_string(),
            what: what.to_string(),
        };
        let rest = url
            .strip_prefix("s3://")
            .ok_or_else(|| bad("expected s3://bucket/prefix"))?;
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if bucket.is_empty() {
            return Err(bad("no bucket name"));
        }
        let prefix = prefix.trim_matches('/');
        if prefix.split('/').any(|part| part == "." || part == "..") || prefix.contains("//") {
            return Err(bad("the prefix has an empty, `.` or `..` part"));
        }
        Ok(BucketUrl {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        })
    }
}

impl fmt::Display for BucketUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            write!(f, "s3://{}", self.bucket)
        } else {
            write!(f, "s3://{}/{}", self.bucket, self.prefix)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_bucket_and_prefix() {
        let url: BucketUrl = "s3://b/chain/main/".parse().unwrap();
        assert_eq!(url.bucket, "b");
        assert_eq!(url.prefix, "chain/main");
        assert_eq!(url.key("manifest.json"), "chain/main/manifest.json");
        assert_eq!(url.to_string(), "s3://b/chain/main");
        let bare: BucketUrl = "s3://b".parse().unwrap();
        assert_eq!(bare.key("x"), "x");
        for bad in ["b/p", "s3://", "s3:///p", "s3://b/a/../c", "s3://b/a//c"] {
            assert!(bad.parse::<BucketUrl>().is_err(), "{bad}");
        }
    }
}
