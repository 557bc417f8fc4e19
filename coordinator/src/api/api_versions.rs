//! ApiVersions: tell the client which versions of which APIs this broker serves.
//!
//! Rules:
//! - Advertise exactly the served table (`groupsim_wire::versions`), so a client never picks a version we
//!   would refuse.
//! - v3+ requests carry the client's software name and version; Kafka refuses names that do
//!   not match `[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?` with INVALID_REQUEST, and so do we.
//! - A request at a version we do not serve is answered (by the wire server, before the broker
//!   sees it) with UNSUPPORTED_VERSION in the v0 layout: see
//!   [`unsupported_api_versions`](groupsim_wire::versions::unsupported_api_versions).

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::{ApiVersionsRequest, ApiVersionsResponse};

use groupsim_wire::versions::served_api_versions;

/// Answers an ApiVersions request of `version`.
pub fn handle(version: i16, request: &ApiVersionsRequest) -> ApiVersionsResponse {
    if version >= 3
        && !(valid_software_field(&request.client_software_name)
            && valid_software_field(&request.client_software_version))
    {
        return ApiVersionsResponse::default()
            .with_error_code(ResponseError::InvalidRequest.code());
    }
    ApiVersionsResponse::default().with_api_keys(served_api_versions())
}

/// Kafka's rule for client software names and versions.
fn valid_software_field(s: &str) -> bool {
    let bytes = s.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else { return false };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && bytes.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'.')
}

#[cfg(test)]
mod tests {
    use super::*;
    use kafka_protocol::protocol::StrBytes;

    #[test]
    fn software_names_follow_kafkas_pattern() {
        for ok in ["a", "groupsim", "librdkafka-2.1", "x.y-z9"] {
            assert!(valid_software_field(ok), "{ok}");
        }
        for bad in ["", "-a", "a-", "a b", "a_b", ".a"] {
            assert!(!valid_software_field(bad), "{bad}");
        }
    }

    #[test]
    fn v3_request_with_invalid_software_name_gets_invalid_request() {
        let req = ApiVersionsRequest::default()
            .with_client_software_name(StrBytes::from_static_str("bad name"))
            .with_client_software_version(StrBytes::from_static_str("1.0"));
        assert_eq!(handle(3, &req).error_code, ResponseError::InvalidRequest.code());
        // v0-2 have no such fields.
        assert_eq!(handle(2, &req).error_code, 0);
    }
}
