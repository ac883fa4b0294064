/**
 * @appexec/s3: produced media and uploads in an S3-compatible bucket (AWS S3, R2, MinIO):
 * `S3BlobStore`, core's `BlobStore` port on the bucket, and `S3MediaUrls`, presigned GET URLs of
 * it as media URLs. The only appexec package that brings the AWS SDK: install it only to keep
 * media in a bucket (`appexec serve --media s3://…` loads it only then).
 */
export * as S3BlobStore from "./S3BlobStore.js"
export * as S3MediaUrls from "./S3MediaUrls.js"
