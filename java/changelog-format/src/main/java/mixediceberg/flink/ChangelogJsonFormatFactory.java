package mixediceberg.flink;

import java.util.Collections;
import java.util.Set;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.format.EncodingFormat;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.DynamicTableFactory;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.factories.SerializationFormatFactory;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;

/**
 * The {@code mixed-iceberg-changelog-json} format: a changelog row as {@code {"op": "+U", "data": {...}}}, the
 * Flink changelog JSON that mixed-iceberg's ingest parser reads (mixed_iceberg/ingest/cdc.py).
 *
 * <p>Why a format of our own: Flink's changelog formats (debezium-json, canal-json, maxwell-json, ogg-json)
 * write an update's two halves as a delete and an insert, so -U/+U reach the table as -D/+I, which the
 * partial-update and first-row merge engines treat differently. This one keeps each row's RowKind. Encoding
 * only: the staging topic it writes is read by the ingest job, never by Flink.
 */
public final class ChangelogJsonFormatFactory implements SerializationFormatFactory {
    public static final String IDENTIFIER = "mixed-iceberg-changelog-json";

    @Override
    public String factoryIdentifier() {
        return IDENTIFIER;
    }

    @Override
    public Set<ConfigOption<?>> requiredOptions() {
        return Collections.emptySet();
    }

    @Override
    public Set<ConfigOption<?>> optionalOptions() {
        return Collections.emptySet();
    }

    @Override
    public EncodingFormat<SerializationSchema<RowData>> createEncodingFormat(
            DynamicTableFactory.Context context, ReadableConfig formatOptions) {
        FactoryUtil.validateFactoryOptions(this, formatOptions);
        return new EncodingFormat<SerializationSchema<RowData>>() {
            @Override
            public SerializationSchema<RowData> createRuntimeEncoder(
                    DynamicTableSink.Context sinkContext, DataType physicalDataType) {
                return new ChangelogJsonSerializationSchema((RowType) physicalDataType.getLogicalType());
            }

            @Override
            public ChangelogMode getChangelogMode() {
                return ChangelogMode.all();
            }
        };
    }
}
